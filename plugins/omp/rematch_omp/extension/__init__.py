"""rematch's pi/omp extension, shipped as TypeScript source (``rematch.ts``)."""

from pathlib import Path

#: The extension's source, which ``rematch hooks install --harness pi|omp`` copies.
SOURCE = Path(__file__).with_name("rematch.ts")
