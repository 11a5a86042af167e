"""The application: the command line, the runtime assembly (the one place components are
chosen), the headless simulator and the config view."""
