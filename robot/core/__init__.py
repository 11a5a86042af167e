"""What every part of the robot shares: its events and their bus, the one retry policy, secret
redaction."""
