"""The Fluss wire protocol, shared by the client and the embedded server."""
