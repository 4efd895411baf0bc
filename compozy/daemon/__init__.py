"""The daemon process: listening sockets, logging, and the process that serves the API."""
