print("DemoApp: not built yet")
