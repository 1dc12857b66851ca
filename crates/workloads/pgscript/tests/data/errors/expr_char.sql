\set x 1 @ 2
