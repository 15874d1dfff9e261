"""``python -m plait_cli``: the ``plait`` command."""

from plait_cli import main

if __name__ == "__main__":
    main()
