"""e2b.sandbox: E2B's module names for the types programs import from it
(commands.command_handle, commands.main, filesystem.filesystem,
filesystem.watch_handle, sandbox_api), from cellvm."""
