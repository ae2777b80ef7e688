"""A session's conversation, read from its source transcript through its plugin (docs/cli.md, "Reading a session")."""
