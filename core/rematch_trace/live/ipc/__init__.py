"""IPC v2: frames, bounded JSON decoding and the request/reply messages.

Only the standard library is imported here: a hook process pays for these
imports on every tool call.
"""
