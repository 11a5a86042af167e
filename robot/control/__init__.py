"""What a body or an operator may ask the running robot to do: the commands, validated once for
MQTT and the console."""
