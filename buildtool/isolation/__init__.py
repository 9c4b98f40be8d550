"""Run marked tests each in a child process with a controlled environment."""
