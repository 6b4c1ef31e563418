"""Layer judge: the oracle and its streaming read-back, the checks every run gets."""
