\startpipeline x
