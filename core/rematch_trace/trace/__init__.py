"""The trace rules: records, synthesis of imported sessions, pre-classification, truncation, flags, canonical JSON and folding a trace back."""
