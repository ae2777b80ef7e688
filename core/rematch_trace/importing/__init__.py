"""Importing: the bounded line reader, one source's resumable import, and the batch import."""
