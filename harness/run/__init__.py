"""Layer run: one run (prepare, launch, classify, judge, record) and the matrix of them."""
