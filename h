in-f
