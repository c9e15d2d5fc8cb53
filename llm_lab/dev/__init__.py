"""Maintainer and bug-report tools: env (the environment block to paste), gpu_check (nbval on a GPU)."""
