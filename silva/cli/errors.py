"""The error the command line reports in one line (exit status 1)."""

__all__ = ["CLIError"]


class CLIError(Exception):
    """An error to report to the user in one line (exit status 1)."""
