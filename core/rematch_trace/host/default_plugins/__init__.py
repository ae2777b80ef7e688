"""Plugins that ship with the core and register like any other."""
