"""Live capture: traces and security events written while a session runs (see docs/live-capture.md)."""
