"""Run marked tests each in a child process with a controlled environment (docs/testing.md).

The plugin knows no project's variables: a project names the parent variables its children
inherit with the `isolated_inherit` ini setting (its conftest may add them at configure time)
and sets or unsets the others per test with the marker's `env=` / `envs=`.
"""
