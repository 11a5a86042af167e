"""What the body does while the robot speaks: gesture tags, the gesture planner, and the
Sentence that carries both."""
