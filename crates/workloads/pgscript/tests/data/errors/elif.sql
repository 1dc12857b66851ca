\elif 1
