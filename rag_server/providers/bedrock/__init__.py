"""AWS Bedrock providers (boto3 bedrock-runtime)."""
