"""Storage: the data folder, atomic writes, the rollback journal, the ledger and saved states."""
