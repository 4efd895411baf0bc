"""Agents from the ACP registry: reading its catalog, writing an agent into config.toml, installing its
package, and telling whether a provider's command is really installed.

Layer 2 (an operating-system seam, like proc and boundary): stdlib and layers 0-1 only.
"""
