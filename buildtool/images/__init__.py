"""Image builds: the three sidecar images from one Dockerfile on a real BuildKit.

`buildtool images build` finds the Docker daemon (Docker SDK) and a BuildKit client (CLI),
provisions the base image, prepares a hash-pinned wheelhouse on the host, then builds the
targets and prints one summary line per image. See docs/images.md.
"""
