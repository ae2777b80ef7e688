"""The plugin host: hookspecs, the neutral vocabulary, plugin loading and the typed facade over ``pm.hook``."""
