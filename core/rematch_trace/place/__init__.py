"""Where a session ran: repository identity from files, and its domain."""
