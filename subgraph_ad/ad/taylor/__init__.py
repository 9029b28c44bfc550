"""ad/taylor"""
