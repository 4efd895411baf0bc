"""`python -m compozy ...` runs the CLI."""

from compozy.cli.main import main

if __name__ == "__main__":
    main()
