print("vault: building")
