"""compozy: a local daemon that gives coding agents durable sessions."""

__version__ = "0.1.0"
