"""compile/backends"""
