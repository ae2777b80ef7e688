"""The report: a static HTML site of every session (``rematch report``) and the figures behind it
(``rematch stats``, ``rematch sessions``)."""
