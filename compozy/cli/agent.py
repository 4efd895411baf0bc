"""`compozy agent reference`: runs the built-in ACP agent on stdio (used by the zipapp).

Layer 6 (surface).
"""

from compozy.cli.main import cli


@cli.group(hidden=True)
def agent():
    """Built-in agents.

    \b
    Example:
      compozy agent reference < requests.jsonl
    """


@agent.command("reference")
def reference():
    """Run the built-in reference ACP agent on stdin/stdout.

    \b
    Example:
      compozy agent reference < requests.jsonl
    """
    from compozy.agents.reference import main
    main()
