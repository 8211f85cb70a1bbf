"""e2b.sandbox._git.args under E2B's module name."""

from cellvm._git_args import (
    build_add_args, build_branches_args, build_checkout_branch_args, build_clone_plan,
    build_commit_args, build_create_branch_args, build_credential_approve_command,
    build_delete_branch_args, build_git_command, build_has_upstream_args, build_pull_args,
    build_push_args, build_remote_add_args, build_remote_add_shell_command,
    build_remote_get_command, build_remote_get_url_args, build_remote_set_url_args,
    build_reset_args, build_restore_args, build_status_args, shell_escape,
)

__all__ = [
    "build_add_args", "build_branches_args", "build_checkout_branch_args", "build_clone_plan",
    "build_commit_args", "build_create_branch_args", "build_credential_approve_command",
    "build_delete_branch_args", "build_git_command", "build_has_upstream_args", "build_pull_args",
    "build_push_args", "build_remote_add_args", "build_remote_add_shell_command",
    "build_remote_get_command", "build_remote_get_url_args", "build_remote_set_url_args",
    "build_reset_args", "build_restore_args", "build_status_args", "shell_escape",
]
