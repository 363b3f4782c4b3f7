"""The client: runtime, connections, metadata cache, admin, tables, writers and scanners."""
