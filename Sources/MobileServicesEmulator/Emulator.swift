// Filled in by issue 4.
