print("mobile-services-emulator: not built yet")
