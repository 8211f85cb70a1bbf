"""e2b.sandbox_sync: E2B's module names for the sync SDK's types programs
import from it (main, paginator, commands.command, commands.command_handle,
commands.pty, filesystem.filesystem, filesystem.watch_handle), from cellvm."""
