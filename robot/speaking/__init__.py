"""The robot's mouth: render and play sentences, how long they take to say, what was actually
said."""
