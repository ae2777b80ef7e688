"""The security event stream: normalized events, action fingerprints, risk features, redaction and the audit."""
