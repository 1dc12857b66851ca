\sleep 10 xs
