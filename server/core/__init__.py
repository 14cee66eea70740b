"""Plumbing every layer may use: result budgets, the one error base, the git runner,
secret masks, fault injection points, tool names."""
