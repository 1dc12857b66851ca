\sleep 1 ms x
