"""The node library, one module per node type (flows-http.md item 2)."""
