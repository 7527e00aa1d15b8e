"""majordomus: the work state of a task, kept in git-native records outside any session's memory."""

__version__ = "0.1.0"
