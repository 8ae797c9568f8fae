"""The namespace's vocabulary: shapes and rules every mount shares; imports nothing of tmsite."""
