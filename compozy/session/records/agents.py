"""The configured agents as GET /api/agents lists them, the doctor that tries one, and the façade's config reload.

Layer 4. A reload swaps the configuration every new session, binding and setting read goes
through (Services.config); a live session keeps the process it is bound to. Whether an agent is installed
is read from its program (compozy.registry.installed), with the environment the daemon gives its agents.
"""

import shutil
import tempfile

from compozy.acp.client import agent_environment
from compozy.acp.doctor import examine
from compozy.registry.installed import state


def agent_entry(config, agent, agent_home):
    provider = config.provider(agent.provider)
    command = list(provider.command) if provider else []
    installed = state(command, agent_environment(provider, agent_home)) if provider else \
        {"installed": False, "detail": f"no provider named {agent.provider!r}"}
    return {"name": agent.name, "provider": agent.provider, "command": command,
            "found": bool(command) and shutil.which(command[0]) is not None,
            "installed": installed["installed"], "install_detail": installed["detail"],
            "runtime": agent.defaults(), "default": agent.name == config["default_agent"],
            "fallback_chain": [route.runtime() for route in agent.fallback_chain],
            "env": sorted(provider.env) if provider else [],  # names only: values may be keys
            "handshake_timeout": provider.handshake_timeout if provider else None}


class AgentViews:
    """Façade methods over the configuration (mixed into SessionManager)."""

    def list_agents(self):
        config, home = self.services.config, str(self.services.home.root)
        return {"agents": [agent_entry(config, agent, home) for _, agent in sorted(config.agents.items())],
                "default_agent": config["default_agent"]}

    def doctor_agent(self, agent_name):
        """Start the agent's provider in a scratch folder (removed after) and report each step."""
        config = self.services.config
        agent = config.agent(agent_name)
        scratch = tempfile.mkdtemp(prefix="compozy-doctor-")
        try:
            home = str(self.services.home.root)
            return {"doctor": examine(config.provider(agent.provider), agent_name, scratch, home, self.services.threads)}
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def reload_config(self, config):
        """New sessions and bindings see config from now on; live bindings keep their process."""
        self.services.config = config
