"""The configured agents as GET /api/agents lists them, and the façade's config reload.

Layer 4. A reload swaps the configuration every new session, binding and setting read goes
through (Services.config); a live session keeps the process it is bound to.
"""

import shutil


def agent_entry(config, agent):
    provider = config.provider(agent.provider)
    command = list(provider.command) if provider else []
    return {"name": agent.name, "provider": agent.provider, "command": command,
            "found": bool(command) and shutil.which(command[0]) is not None,
            "runtime": agent.defaults(), "default": agent.name == config["default_agent"],
            "fallback_chain": [route.runtime() for route in agent.fallback_chain],
            "env": sorted(provider.env) if provider else [],  # names only: values may be keys
            "handshake_timeout": provider.handshake_timeout if provider else None}


class AgentViews:
    """Façade methods over the configuration (mixed into SessionManager)."""

    def list_agents(self):
        config = self.services.config
        return {"agents": [agent_entry(config, agent) for _, agent in sorted(config.agents.items())],
                "default_agent": config["default_agent"]}

    def reload_config(self, config):
        """New sessions and bindings see config from now on; live bindings keep their process."""
        self.services.config = config
