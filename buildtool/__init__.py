"""buildtool: content-stamp build cache, image builds and isolated test runs."""

__version__ = "0.1.0"
