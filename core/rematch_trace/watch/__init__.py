"""``rematch watch``: every watched transcript imported as it is written, at the cost of the new bytes.

:mod:`.roots` says what is watched (the named paths, or every plugin's default
locations, each with its harness hint); :mod:`.changed` turns a burst of file
system changes into the files to import; :mod:`.status` is the one-line status;
:mod:`.watcher` holds the import lock for its lifetime and runs the batch
import's locked body on each burst.
"""
