"""The native tool server: MCP over the operation table, for the agents the daemon binds."""
