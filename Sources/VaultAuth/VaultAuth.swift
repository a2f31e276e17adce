// Filled in by issue 3.
