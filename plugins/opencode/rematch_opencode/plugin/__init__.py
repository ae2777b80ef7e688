"""rematch's opencode plugin (``rematch.ts``), shipped as package data; see :mod:`rematch_trace.live.opencode_install`."""
